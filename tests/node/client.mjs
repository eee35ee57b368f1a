// The official JavaScript client, `@kubernetes/client-node`, against registry-svc's REST API
// (tests/tests/node_client.rs runs it; scripts/kube-clients.sh installs the client under
// target/kube-clients/node).
//
//   KUBECONFIG=... node tests/node/client.mjs SCENARIO [ARG]
//
// The client is loaded from KUBE_CLIENT_NODE (an `npm install --prefix` directory), by default
// target/kube-clients/node of this workspace.
//
// Scenarios:
//   crud         CoreV1Api on ConfigMaps in `default`: create, read, list (by label, in
//                pages), merge and JSON patches, replace, a stale replace (409 Conflict), a
//                dry-run create, deletes (with preconditions), a read of a missing object (404)
//   custom       a CustomResourceDefinition made with ApiextensionsV1Api, Established, and
//                its objects through CustomObjectsApi (create, list, get, merge patch, delete)
//                and KubernetesObjectApi (found by discovery); a Watch of them
//   watch        the client's `Watch` from a listed resourceVersion: ADDED, MODIFIED, DELETED,
//                a bookmark; and from the latest one
//   expired RV   a list at RV (compacted away) and a watch from it: 410
//   informer     `makeInformer` with a label selector: its cache follows creates, updates and
//                deletes of its objects only
//   apply        server-side apply through patchNamespacedConfigMap with
//                PatchStrategy.ServerSideApply and `fieldManager`: created (201), an unchanged
//                re-apply (same resourceVersion), another manager's merge patch, the next
//                apply's 409 Conflict naming it, and `force`
//
// Each scenario checks as it goes and prints what it saw, one line each (no resourceVersions or
// times: the lines are the same on every run); any failure exits 1 with what went wrong.
// The client refuses a plain-HTTP server unless the kubeconfig's cluster says
// `insecure-skip-tls-verify: true` (KubeConfig.createAgent).

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const prefix =
  process.env.KUBE_CLIENT_NODE || join(dirname(fileURLToPath(import.meta.url)), '../../target/kube-clients/node');
if (!existsSync(join(prefix, 'node_modules/@kubernetes/client-node'))) {
  console.error(`${prefix}/node_modules/@kubernetes/client-node is missing: run scripts/kube-clients.sh`);
  process.exit(1);
}
const k8s = await import(pathToFileURL(createRequire(join(prefix, 'package.json')).resolve('@kubernetes/client-node')).href);

const [scenario, arg] = process.argv.slice(2);
const SCENARIOS = ['crud', 'custom', 'watch', 'expired', 'informer', 'apply'];
if (!SCENARIOS.includes(scenario)) fail(`unknown scenario ${JSON.stringify(scenario)}: one of ${SCENARIOS.join(', ')}`);
if (!process.env.KUBECONFIG) fail('KUBECONFIG is not set');
const NS = 'default';
const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const cluster = kc.getCurrentCluster();
if (!cluster) fail('no current cluster in the kubeconfig ($KUBECONFIG)');
if (cluster.server.startsWith('http:') && !cluster.skipTLSVerify) {
  fail(`${cluster.server} is plain HTTP: the client needs insecure-skip-tls-verify: true on the cluster`);
}
const core = kc.makeApiClient(k8s.CoreV1Api);
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const serverSideApply = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply);

function fail(message) {
  console.error(`FAIL (${scenario}): ${message}`);
  process.exit(1);
}

function check(cond, what, got) {
  if (!cond) fail(`${what}${got === undefined ? '' : `: got ${JSON.stringify(got)}`}`);
}

function out(...parts) {
  console.log(parts.map((p) => (typeof p === 'string' ? p : JSON.stringify(p))).join(' '));
}

/** The ApiException of `promise` (which must fail): its HTTP code and the Status body. */
async function apiError(promise, what) {
  try {
    await promise;
  } catch (e) {
    if (!(e instanceof k8s.ApiException)) fail(`${what}: not an ApiException: ${e?.stack ?? e}`);
    const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
    return { code: e.code, body };
  }
  fail(`${what}: succeeded, an error expected`);
}

/** Polls `cond` every 50 ms for at most `seconds`. */
async function until(cond, what, seconds = 30) {
  const end = Date.now() + seconds * 1000;
  while (!(await cond())) {
    if (Date.now() > end) fail(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const cm = (name, data, labels) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, ...(labels ? { labels } : {}) },
  data,
});

async function crud() {
  const made = await core.createNamespacedConfigMap({ namespace: NS, body: cm('alpha', { a: '1' }, { tier: 'front' }) });
  check(made.metadata?.uid && made.metadata?.resourceVersion, 'created with a uid and a resourceVersion', made.metadata);
  check(made.metadata.creationTimestamp instanceof Date, 'creationTimestamp decoded as a Date', made.metadata.creationTimestamp);
  out('created', made.kind, made.metadata.name, made.metadata.namespace, made.data);
  await core.createNamespacedConfigMap({ namespace: NS, body: cm('beta', { b: '2' }, { tier: 'back' }) });

  const read = await core.readNamespacedConfigMap({ name: 'alpha', namespace: NS });
  check(read.metadata.uid === made.metadata.uid, 'read the same uid');
  out('read', read.metadata.name, read.data, read.metadata.labels);

  const list = await core.listNamespacedConfigMap({ namespace: NS });
  check(list.metadata?.resourceVersion, 'a list resourceVersion', list.metadata);
  out('list', list.kind, list.apiVersion, list.items.map((i) => i.metadata.name).sort());
  const front = await core.listNamespacedConfigMap({ namespace: NS, labelSelector: 'tier=front' });
  out('list tier=front', front.items.map((i) => i.metadata.name));
  const notBack = await core.listNamespacedConfigMap({ namespace: NS, labelSelector: 'tier,tier!=back' });
  out('list tier,tier!=back', notBack.items.map((i) => i.metadata.name));

  const patched = await core.patchNamespacedConfigMap(
    { name: 'alpha', namespace: NS, body: { metadata: { labels: { color: 'blue' } }, data: { a: null, c: '3' } } },
    mergePatch,
  );
  check(patched.metadata.resourceVersion !== made.metadata.resourceVersion, 'patch changed the resourceVersion');
  out('patched', patched.data, patched.metadata.labels);

  const replaced = await core.replaceNamespacedConfigMap({
    name: 'alpha',
    namespace: NS,
    body: { ...patched, data: { d: '4' } },
  });
  out('replaced', replaced.data);
  // A JSON patch: the client's default patch content type.
  const jsonPatched = await core.patchNamespacedConfigMap({
    name: 'alpha',
    namespace: NS,
    body: [
      { op: 'test', path: '/data/d', value: '4' },
      { op: 'add', path: '/data/j', value: '6' },
    ],
  });
  out('json patched', jsonPatched.data);

  // The version read before the patch is stale now.
  const stale = await apiError(
    core.replaceNamespacedConfigMap({ name: 'alpha', namespace: NS, body: { ...read, data: { e: '5' } } }),
    'a replace at a stale resourceVersion',
  );
  out('stale replace', stale.code, stale.body?.kind, stale.body?.status, stale.body?.reason, stale.body?.code);
  check(/the object has been modified/.test(stale.body?.message), 'the Conflict message', stale.body?.message);

  const dry = await core.createNamespacedConfigMap({ namespace: NS, body: cm('dry', { z: '0' }), dryRun: 'All' });
  out('dry-run create', dry.metadata.name, Boolean(dry.metadata.uid));
  const page1 = await core.listNamespacedConfigMap({ namespace: NS, limit: 1 });
  check(page1.metadata._continue, 'a continue token with limit=1', page1.metadata);
  const page2 = await core.listNamespacedConfigMap({ namespace: NS, limit: 1, _continue: page1.metadata._continue });
  out('pages', page1.items.map((i) => i.metadata.name), page2.items.map((i) => i.metadata.name), page2.metadata._continue ?? null);

  const wrongUid = await apiError(
    core.deleteNamespacedConfigMap({ name: 'alpha', namespace: NS, body: { preconditions: { uid: 'not-its-uid' } } }),
    'a delete with a wrong uid precondition',
  );
  out('delete with a wrong uid', wrongUid.code, wrongUid.body?.reason);
  const deleted = await core.deleteNamespacedConfigMap({
    name: 'alpha',
    namespace: NS,
    propagationPolicy: 'Background',
    body: { preconditions: { uid: made.metadata.uid } },
  });
  out('deleted', deleted.kind, deleted.status ?? deleted.metadata?.name);
  const missing = await apiError(core.readNamespacedConfigMap({ name: 'alpha', namespace: NS }), 'a read of a deleted object');
  out('read missing', missing.code, missing.body?.reason, missing.body?.details?.name, missing.body?.details?.kind);
  check(missing.body?.message === 'configmaps "alpha" not found', 'the NotFound message', missing.body?.message);
  const again = await apiError(core.deleteNamespacedConfigMap({ name: 'alpha', namespace: NS }), 'a second delete');
  out('delete missing', again.code, again.body?.reason);
  const dup = await apiError(core.createNamespacedConfigMap({ namespace: NS, body: cm('beta', {}) }), 'a duplicate create');
  out('create existing', dup.code, dup.body?.reason);
  const left = await core.listNamespacedConfigMap({ namespace: NS });
  out('left', left.items.map((i) => i.metadata.name));
}

const GROUP = 'stable.example.com';
const cronSchema = {
  type: 'object',
  properties: {
    spec: { type: 'object', properties: { cronSpec: { type: 'string' }, image: { type: 'string' }, replicas: { type: 'integer' } } },
  },
};
const CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `crontabs.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { plural: 'crontabs', singular: 'crontab', kind: 'CronTab', shortNames: ['ct'] },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: cronSchema } }],
  },
};

const crontab = (name, cronSpec, replicas) => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'CronTab',
  metadata: { name },
  spec: { cronSpec, image: 'my-awesome-cron-image', replicas },
});

async function custom() {
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  const made = await ext.createCustomResourceDefinition({ body: CRD });
  out('crd created', made.metadata.name, made.spec.names.kind);
  let conditions = [];
  await until(async () => {
    const d = await ext.readCustomResourceDefinition({ name: CRD.metadata.name });
    conditions = (d.status?.conditions ?? []).filter((c) => c.status === 'True').map((c) => c.type).sort();
    return conditions.includes('Established');
  }, 'the CRD Established');
  out('crd conditions', conditions);

  const co = kc.makeApiClient(k8s.CustomObjectsApi);
  const where = { group: GROUP, version: 'v1', namespace: NS, plural: 'crontabs' };
  // Served a moment after Established: retried while 404.
  let created;
  await until(async () => {
    try {
      created = await co.createNamespacedCustomObject({ ...where, body: crontab('nightly', '0 0 * * *', 2) });
      return true;
    } catch (e) {
      if (e instanceof k8s.ApiException && e.code === 404) return false;
      throw e;
    }
  }, 'crontabs served');
  out('created', created.kind, created.metadata.name, created.metadata.namespace, created.spec);
  await co.createNamespacedCustomObject({ ...where, body: crontab('hourly', '0 * * * *', 1) });

  const list = await co.listNamespacedCustomObject(where);
  out('list', list.kind, list.apiVersion, list.items.map((o) => o.metadata.name).sort());
  const got = await co.getNamespacedCustomObject({ ...where, name: 'nightly' });
  check(got.metadata.uid === created.metadata.uid, 'get: the same uid');
  out('get', got.metadata.name, got.spec.cronSpec, got.spec.replicas);
  const patched = await co.patchNamespacedCustomObject(
    { ...where, name: 'nightly', body: { spec: { replicas: 5 } } },
    mergePatch,
  );
  out('patched', patched.spec.replicas, patched.spec.cronSpec);
  const all = await co.listCustomObjectForAllNamespaces({ group: GROUP, version: 'v1', plural: 'crontabs' });
  out('all namespaces', all.items.map((o) => `${o.metadata.namespace}/${o.metadata.name}`).sort());

  // The generic client: finds the resource by discovery (GET /apis/GROUP/VERSION).
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const generic = await objects.read({ apiVersion: `${GROUP}/v1`, kind: 'CronTab', metadata: { name: 'nightly', namespace: NS } });
  out('generic read', generic.kind, generic.metadata.name, generic.spec.replicas);
  const genericList = await objects.list(`${GROUP}/v1`, 'CronTab', NS);
  out('generic list', genericList.items.map((o) => o.metadata.name).sort());
  const genericPatch = await objects.patch(
    { apiVersion: `${GROUP}/v1`, kind: 'CronTab', metadata: { name: 'nightly', namespace: NS }, spec: { image: 'other' } },
    undefined, undefined, undefined, undefined, k8s.PatchStrategy.MergePatch,
  );
  out('generic patch', genericPatch.spec.image, genericPatch.spec.replicas);
  const smp = await apiError(
    objects.patch({ apiVersion: `${GROUP}/v1`, kind: 'CronTab', metadata: { name: 'nightly', namespace: NS }, spec: { replicas: 1 } }),
    'a strategic merge patch of a custom object',
  );
  out('strategic merge patch', smp.code, smp.body?.reason);

  const deleted = await co.deleteNamespacedCustomObject({ ...where, name: 'hourly' });
  out('deleted', deleted.kind, deleted.status ?? deleted.metadata?.name);
  const missing = await apiError(co.getNamespacedCustomObject({ ...where, name: 'hourly' }), 'a get of a deleted object');
  out('get missing', missing.code, missing.body?.reason);
  const left = await co.listNamespacedCustomObject(where);
  out('left', left.items.map((o) => o.metadata.name));
  // The changes since the first list, watched from its version.
  const changes = await watchUntil(
    `/apis/${GROUP}/v1/namespaces/${NS}/crontabs`,
    { resourceVersion: list.metadata.resourceVersion },
    (type, obj) => type === 'DELETED' && obj.metadata.name === 'hourly',
  );
  out('watched', changes.map(([t, o]) => `${t} ${o.kind} ${o.metadata.name}`));
}

/** A `Watch` of `path` from `resourceVersion`: calls `onEvent(type, object)` until it returns
 *  true, then aborts; resolves with the events seen (or rejects with the watch's error). */
function watchUntil(path, query, onEvent, seconds = 30) {
  return new Promise((resolve, reject) => {
    const seen = [];
    let controller;
    let finished = false;
    const finish = (err) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      controller?.abort();
      if (err) reject(err);
      else resolve(seen);
    };
    const timer = setTimeout(() => finish(new Error(`watch: no end within ${seconds}s: ${JSON.stringify(seen)}`)), seconds * 1000);
    new k8s.Watch(kc)
      .watch(
        path,
        query,
        (type, obj) => {
          seen.push([type, obj]);
          if (onEvent(type, obj)) finish();
        },
        (err) => finish(err ?? new Error(`watch ended early: ${JSON.stringify(seen.map(([t]) => t))}`)),
      )
      .then((c) => {
        controller = c;
        if (finished) c.abort();
      }, finish);
  });
}

async function watch() {
  await core.createNamespacedConfigMap({ namespace: NS, body: cm('before', { x: '0' }) });
  const listed = await core.listNamespacedConfigMap({ namespace: NS });
  const rv = listed.metadata.resourceVersion;
  out('listed', listed.items.map((i) => i.metadata.name));
  await core.createNamespacedConfigMap({ namespace: NS, body: cm('w1', { x: '1' }) });
  await core.patchNamespacedConfigMap({ name: 'w1', namespace: NS, body: { data: { x: '2' } } }, mergePatch);
  await core.deleteNamespacedConfigMap({ name: 'w1', namespace: NS });
  // From the listed version: the three changes, then a bookmark (every storage-svc
  // `watch_bookmark_interval`; the test makes it 500 ms).
  let deleted = false;
  const seen = await watchUntil(`/api/v1/namespaces/${NS}/configmaps`, { resourceVersion: rv, allowWatchBookmarks: true }, (type, obj) => {
    deleted ||= type === 'DELETED' && obj.metadata.name === 'w1';
    return deleted && type === 'BOOKMARK';
  });
  let last = BigInt(rv);
  for (const [type, obj] of seen) {
    const v = BigInt(obj.metadata.resourceVersion);
    if (type === 'BOOKMARK') {
      check(v >= last, 'a bookmark not behind the events before it', [String(last), String(v)]);
      out('bookmark', obj.kind, obj.apiVersion, Object.keys(obj.metadata).sort());
      continue;
    }
    check(v > last, 'resourceVersions increasing from the listed one', [String(last), String(v)]);
    last = v;
    out('event', type, obj.kind, obj.metadata.name, obj.data);
  }
  // A watch from the latest version, open before a change is made.
  const now = (await core.listNamespacedConfigMap({ namespace: NS })).metadata.resourceVersion;
  const live = watchUntil(`/api/v1/namespaces/${NS}/configmaps`, { resourceVersion: now }, (type, obj) => type === 'ADDED' && obj.metadata.name === 'w2');
  await new Promise((r) => setTimeout(r, 300));
  await core.createNamespacedConfigMap({ namespace: NS, body: cm('w2', { x: '3' }) });
  out('live', (await live).map(([t, o]) => `${t} ${o.metadata.name}`));
}

async function expired() {
  check(arg, 'the compacted resourceVersion as an argument');
  const list = await apiError(
    core.listNamespacedConfigMap({ namespace: NS, resourceVersion: arg, resourceVersionMatch: 'Exact' }),
    'a list at a compacted resourceVersion',
  );
  out('list', list.code, list.body?.reason);
  // A watch from it: kube-apiserver answers 200 and one ERROR event with a 410 Status (or a 410
  // response; the client's Watch reports that as the error's statusCode).
  let status;
  try {
    const seen = await watchUntil(
      `/api/v1/namespaces/${NS}/configmaps`,
      { resourceVersion: arg },
      (type) => type === 'ERROR',
      20,
    );
    const [type, obj] = seen[seen.length - 1];
    status = `${type} ${obj.code} ${obj.reason}`;
  } catch (e) {
    if (e?.statusCode === undefined) throw e;
    status = `response ${e.statusCode}`;
  }
  out('watch', status);
}

async function informer() {
  // Its own objects (label informer=yes) among others it must not see.
  const mine = { informer: 'yes' };
  await core.createNamespacedConfigMap({ namespace: NS, body: cm('old', { x: '0' }, mine) });
  await core.createNamespacedConfigMap({ namespace: NS, body: cm('other', { x: '0' }) });
  const path = `/api/v1/namespaces/${NS}/configmaps`;
  const selector = 'informer=yes';
  const inf = k8s.makeInformer(
    kc,
    path,
    () => core.listNamespacedConfigMap({ namespace: NS, labelSelector: selector }),
    selector,
  );
  const events = [];
  inf.on(k8s.ADD, (o) => events.push(`add ${o.metadata.name}`));
  inf.on(k8s.UPDATE, (o) => events.push(`update ${o.metadata.name} x=${o.data?.x}`));
  inf.on(k8s.DELETE, (o) => events.push(`delete ${o.metadata.name}`));
  let error;
  inf.on(k8s.ERROR, (e) => {
    error = e;
  });
  await inf.start();
  const names = () => inf.list(NS).map((o) => o.metadata.name).sort().join(',');
  await until(() => error || names() === 'old', 'the informer listing `old`');
  if (error) fail(`informer error: ${error?.stack ?? error}`);
  await core.createNamespacedConfigMap({ namespace: NS, body: cm('new', { x: '1' }, mine) });
  await core.patchNamespacedConfigMap({ name: 'new', namespace: NS, body: { data: { x: '2' } } }, mergePatch);
  await core.patchNamespacedConfigMap({ name: 'other', namespace: NS, body: { data: { x: '9' } } }, mergePatch);
  await core.deleteNamespacedConfigMap({ name: 'old', namespace: NS });
  await until(
    () => error || (names() === 'new' && inf.get('new', NS)?.data?.x === '2'),
    'the informer cache converging on `new` x=2',
  );
  if (error) fail(`informer error: ${error?.stack ?? error}`);
  out('cache', inf.list(NS).map((o) => [o.metadata.name, o.data]));
  out('events', events);
  await inf.stop();
}

async function apply() {
  const name = 'js-applied';
  const body = cm(name, { key: 'mine' });
  const owners = (o) => o.metadata.managedFields.map((m) => [m.manager, m.operation]);
  const made = await core.patchNamespacedConfigMapWithHttpInfo({ name, namespace: NS, body, fieldManager: 'js' }, serverSideApply);
  check(made.data.metadata?.uid && made.data.metadata?.resourceVersion, 'applied with a uid and a resourceVersion', made.data.metadata);
  const entry = made.data.metadata.managedFields?.[0];
  check(entry?.time instanceof Date, 'a managed fields time decoded as a Date', entry);
  check(JSON.stringify(entry.fieldsV1) === '{"f:data":{"f:key":{}}}', "the applier's fields", entry.fieldsV1);
  out(
    'created',
    String(made.httpStatusCode),
    made.data.metadata.name,
    made.data.data,
    made.data.metadata.managedFields.map((m) => [m.manager, m.operation, m.fieldsType]),
  );
  const rv = made.data.metadata.resourceVersion;

  const again = await core.patchNamespacedConfigMapWithHttpInfo({ name, namespace: NS, body, fieldManager: 'js' }, serverSideApply);
  out('unchanged', String(again.httpStatusCode), String(again.data.metadata.resourceVersion === rv));

  const theirs = await core.patchNamespacedConfigMap(
    { name, namespace: NS, body: { data: { key: 'theirs' } }, fieldManager: 'other' },
    mergePatch,
  );
  check(theirs.metadata.resourceVersion !== rv, "the other manager's patch changed the resourceVersion");
  out('patched', theirs.data.key, owners(theirs));

  const conflict = await apiError(
    core.patchNamespacedConfigMap({ name, namespace: NS, body, fieldManager: 'js' }, serverSideApply),
    "an apply of another manager's field",
  );
  out('conflict', String(conflict.code), conflict.body.reason, conflict.body.message);
  out('causes', (conflict.body.details?.causes ?? []).map((c) => [c.reason, c.field]));
  const kept = await core.readNamespacedConfigMap({ name, namespace: NS });
  check(kept.metadata.resourceVersion === theirs.metadata.resourceVersion, 'the conflict wrote nothing', kept.metadata);
  out('kept', kept.data.key);

  const forced = await core.patchNamespacedConfigMap({ name, namespace: NS, body, fieldManager: 'js', force: true }, serverSideApply);
  out('forced', forced.data.key, owners(forced));
}

try {
  await { crud, custom, watch, expired, informer, apply }[scenario]();
  out('done', scenario);
  process.exit(0);
} catch (e) {
  fail(e?.stack ?? String(e));
}
