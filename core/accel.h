/* Accelerator names and families (internal). */
#ifndef SKYPOOL_ACCEL_H
#define SKYPOOL_ACCEL_H

#include <skypool/skypool.h>

typedef struct sp_accel_alias {
    const char *name;   /* what a user writes, matched case-insensitively */
    const char *model;  /* the model it means by itself; NULL: the whole family */
    const char *family; /* the family a memory constraint chooses within; NULL: none */
} sp_accel_alias;

const sp_accel_alias *sp_accel_alias_find(const char *name);
const sp_accel_alias *sp_accel_aliases(size_t *n);
/* The models of a family, in table order; returns how many were stored. */
size_t sp_accel_family(const char *family, const sp_accel_model **out, size_t max);

#endif
