// The Relay schema as graphql-js sees it (tests/test_relay_clients.py): reads an
// introspection result ({"data": {"__schema": ...}}) from the file argv[2], builds the
// client schema, prints {"errors": [validateSchema messages]} and writes the schema's
// SDL (printSchema) to the file argv[3] for relay-compiler.
import { readFileSync, writeFileSync } from "node:fs";
import { buildClientSchema, printSchema, validateSchema } from "graphql";

const result = JSON.parse(readFileSync(process.argv[2], "utf8"));
const schema = buildClientSchema(result.data);
const errors = validateSchema(schema).map((e) => e.message);
writeFileSync(process.argv[3], printSchema(schema));
console.log(JSON.stringify({ errors }));
