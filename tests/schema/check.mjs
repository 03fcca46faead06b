// Checks schemas/pool.schema.json against the pool files the C reader is tested with:
//   - the schema compiles under Ajv's strict mode (JSON Schema 2020-12);
//   - every example and every tests/fixtures/pools/good-*.yaml validates;
//   - every bad-schema-*.yaml is rejected (a rule the schema can express);
//   - every other bad-*.yaml that parses as one YAML document is accepted: its error is one only
//     the C reader can find (spec grammar, MIG, anchors), so a fixture the schema rejects belongs
//     under bad-schema-*.
// Run: cd tests/schema && npm ci && npm test
import Ajv2020 from "ajv/dist/2020.js";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const schema = JSON.parse(readFileSync(join(root, "schemas", "pool.schema.json"), "utf8"));
const ajv = new Ajv2020({ strict: true, allErrors: true });
const validate = ajv.compile(schema);

// One document (null for an empty one), or undefined when the yaml package refuses the text
// (duplicate keys, an alias without its anchor, several documents, a syntax error): the C reader
// refuses those as well.
function load(path) {
  const docs = parseAllDocuments(readFileSync(path, "utf8"));
  if (!Array.isArray(docs) || docs.length !== 1 || docs[0].errors.length > 0) return undefined;
  try {
    return docs[0].toJS();
  } catch {
    return undefined;
  }
}

function files(dir, test) {
  return readdirSync(dir)
    .filter(test)
    .sort()
    .map((f) => join(dir, f));
}

const examples = files(join(root, "examples"), (f) => f.endsWith(".yaml"));
const fixtures = join(root, "tests", "fixtures", "pools");
const good = files(fixtures, (f) => f.startsWith("good-") && f.endsWith(".yaml"));
const badSchema = files(fixtures, (f) => f.startsWith("bad-schema-") && f.endsWith(".yaml"));
const badOther = files(
  fixtures,
  (f) => f.startsWith("bad-") && !f.startsWith("bad-schema-") && f.endsWith(".yaml"),
);

let failures = 0;
let checks = 0;
function check(ok, path, what) {
  checks++;
  if (!ok) {
    failures++;
    console.error(`FAIL ${relative(root, path)}: ${what}`);
  }
}

for (const path of [...examples, ...good]) {
  const doc = load(path);
  const ok = doc !== undefined && validate(doc);
  const why = doc === undefined ? "not one YAML document" : ajv.errorsText(validate.errors);
  check(ok, path, `should validate: ${why}`);
}
for (const path of badSchema) {
  const doc = load(path);
  // It must parse, so that it is the schema, not the YAML parser, that rejects it.
  check(doc !== undefined && !validate(doc), path, "should be rejected by the schema");
}
for (const path of badOther) {
  const doc = load(path);
  check(doc === undefined || validate(doc), path,
        `the schema rejects it (${ajv.errorsText(validate.errors)}): rename it bad-schema-*`);
}

if (examples.length === 0 || good.length === 0 || badSchema.length === 0) {
  console.error("FAIL: found no examples or fixtures");
  failures++;
}
console.log(`${checks - failures}/${checks} schema checks passed`);
process.exit(failures ? 1 : 0);
