// A ConfigMap's life through registry-svc, from Node: create, get, list, watch, delete.
//
//   npm install @grpc/grpc-js @grpc/proto-loader
//   node examples/clients/node/configmaps.js [127.0.0.1:50052] [path/to/proto]
//
// @grpc/proto-loader reads the repository's .proto files at run time (no generated code).
'use strict';

const path = require('path');
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');

const address = process.argv[2] || '127.0.0.1:50052';
const protoDir = process.argv[3] || path.join(__dirname, '..', '..', '..', 'proto');

const definition = loader.loadSync(['core/v1/core.proto'], {
  includeDirs: [protoDir],
  longs: String,
  enums: String,
  defaults: true,
});
const core = grpc.loadPackageDefinition(definition).core.v1;
const cms = new core.ConfigMaps(address, grpc.credentials.createInsecure());

const deadline = () => ({ deadline: Date.now() + 10000 });
const call = (method, request) =>
  new Promise((resolve, reject) =>
    cms[method](request, deadline(), (err, reply) => (err ? reject(err) : resolve(reply))));

function fail(message) {
  throw new Error(message);
}

async function main() {
  const name = `example-node-${process.pid}`;
  const created = await call('Create', {
    namespace: 'default',
    configMap: { metadata: { name, labels: { example: 'node' } }, data: { greeting: 'hello' } },
  });
  const rv = created.metadata.resourceVersion;
  console.log(`created ${name} at resourceVersion ${rv}, uid ${created.metadata.uid}`);

  const got = await call('Get', { namespace: 'default', name });
  if (got.data.greeting !== 'hello') fail(`get: ${JSON.stringify(got)}`);

  const listed = await call('List', {
    namespace: 'default',
    options: { labelSelector: 'example=node' },
  });
  const names = listed.items.map((item) => item.metadata.name);
  if (!names.includes(name)) fail(`list: ${names}`);
  console.log(`listed ${names.length} with example=node at ${listed.metadata.resourceVersion}`);

  // Watch from the creation's resourceVersion: every change after it, the delete included.
  const events = cms.Watch(
    {
      namespace: 'default',
      options: { resourceVersion: rv, fieldSelector: `metadata.name=${name}` },
    },
    deadline(),
  );
  const sawDelete = new Promise((resolve, reject) => {
    events.on('data', (event) => {
      console.log(`watch: ${event.type} ${event.object.metadata.name}`);
      if (event.type === 'DELETED') resolve();
    });
    events.on('error', (err) => {
      if (err.code !== grpc.status.CANCELLED) reject(err);
    });
  });
  const deleted = await call('Delete', { namespace: 'default', name });
  if (!deleted.deleted) fail(`delete: ${JSON.stringify(deleted)}`);
  await sawDelete;
  events.cancel();

  try {
    await call('Get', { namespace: 'default', name });
    fail('still there after the delete');
  } catch (err) {
    if (err.code !== grpc.status.NOT_FOUND) throw err;
    console.log(`get after delete: NOT_FOUND: ${err.details}`);
  }
  console.log('node client: ok');
}

main()
  .then(() => cms.close())
  .catch((err) => {
    console.error(err);
    process.exit(1);
  });
