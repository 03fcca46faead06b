#ifndef SKYPOOL_STRPOOL_H
#define SKYPOOL_STRPOOL_H

typedef struct sp_strpool sp_strpool;

sp_strpool *sp_strpool_new(void);
/* The pool's copy of s (one per distinct string), or NULL when out of memory. */
const char *sp_strpool_intern(sp_strpool *pool, const char *s);
void sp_strpool_free(sp_strpool *pool);

#endif
