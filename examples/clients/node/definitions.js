// Every published definition of tests/fixtures/crds/ through registry-svc, from Node: create,
// get, list, delete, each schema compared with the manifest's. A definition's
// `openAPIV3Schema` travels as JSON text (see apiextensions.proto).
//
//   node examples/clients/node/definitions.js [127.0.0.1:50052] [path/to/proto] [CRD_DIR]
'use strict';

const fs = require('fs');
const path = require('path');
const assert = require('assert');
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');

const address = process.argv[2] || '127.0.0.1:50052';
const protoDir = process.argv[3] || path.join(__dirname, '..', '..', '..', 'proto');
const crdDir = process.argv[4] || path.join(__dirname, '..', '..', '..', 'tests', 'fixtures', 'crds');

const definition = loader.loadSync(['apiextensions/v1/apiextensions.proto'], {
  includeDirs: [protoDir],
  longs: String,
  enums: String,
  defaults: true,
  json: true,
});
const ext = grpc.loadPackageDefinition(definition).apiextensions.v1;
const defs = new ext.CustomResourceDefinitions(address, grpc.credentials.createInsecure());

const call = (method, request) =>
  new Promise((resolve, reject) =>
    defs[method](request, { deadline: Date.now() + 10000 }, (err, reply) =>
      err ? reject(err) : resolve(reply)));

// proto-loader names fields in camelCase of their proto names, not by json_name: the manifest's
// JSON is the request as it is but for `openAPIV3Schema`, here `openApiV3Schema` (JSON text).
function request(manifest) {
  const { apiVersion, kind, ...crd } = structuredClone(manifest);
  for (const v of crd.spec.versions) {
    v.schema = { openApiV3Schema: JSON.stringify(v.schema.openAPIV3Schema) };
  }
  return crd;
}

const schemas = (crd) =>
  Object.fromEntries(crd.spec.versions.map((v) => [v.name, JSON.parse(v.schema.openApiV3Schema)]));

async function gone(name) {
  const until = Date.now() + 30000;
  while (Date.now() < until) {
    try {
      await call('Get', { name });
    } catch (e) {
      if (e.code === grpc.status.NOT_FOUND) return;
      throw e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} is still there after 30 s`);
}

async function main() {
  for (const file of fs.readdirSync(crdDir).filter((f) => f.endsWith('.json')).sort()) {
    const manifest = JSON.parse(fs.readFileSync(path.join(crdDir, file), 'utf8'));
    const name = manifest.metadata.name;
    const want = Object.fromEntries(manifest.spec.versions.map((v) => [v.name, v.schema.openAPIV3Schema]));
    try {
      await call('Delete', { name });
      await gone(name);
    } catch (e) {
      if (e.code !== grpc.status.NOT_FOUND) throw e;
    }
    const created = await call('Create', { customResourceDefinition: request(manifest) });
    assert.deepStrictEqual(schemas(created), want, `${name}: the created schema differs`);
    const got = await call('Get', { name });
    assert.deepStrictEqual(schemas(got), want, `${name}: the schema read back differs`);
    const listed = await call('List', {});
    assert.ok(listed.items.some((d) => d.metadata.name === name), `${name} is not listed`);
    await call('Delete', { name });
    await gone(name);
    console.log(`${name}: created, read back, listed and deleted (${JSON.stringify(want).length} bytes of schema)`);
  }
  defs.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
