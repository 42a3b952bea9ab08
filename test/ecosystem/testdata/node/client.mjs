// Drives customapi serve with the official JavaScript client
// (@kubernetes/client-node). Run by test/ecosystem's TestNodeClient:
//
//   node client.mjs --kubeconfig ADMIN_KUBECONFIG --namespace NS
//
// with node_modules installed from this directory's package-lock.json
// (hack/install-ecosystem.sh). NS must exist, and the Gadget CRD
// (testdata/chart/crds/gadgets.yaml) must be Established. For each of two
// kinds, the Go-typed Custom (test/v1, customs) and the CRD's Gadget
// (ecosystem.customapi.io/v1, gadgets), it creates, gets, lists with a label
// selector, merge-patches, watches (Watch, a plain watch and a watch list
// with sendInitialEvents) and deletes an object through CustomObjectsApi, and
// provokes a 409 (an update with a stale resourceVersion) and a 422 (an
// invalid object). Each check prints one JSON line on stdout:
//
//   {"check": "customs/create", "ok": true, "detail": "..."}
//
// and the script exits 0 once every check ran, whatever their outcome: the
// Go test judges the lines.

import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import * as k8s from '@kubernetes/client-node';

// How long a watch may wait for its events, in milliseconds.
const watchTimeout = 30000;

const kinds = [
  {
    plural: 'customs',
    group: 'test',
    version: 'v1',
    kind: 'Custom',
    spec: (message) => ({ message, replicas: 1 }),
    // The server refuses a negative spec.replicas.
    invalid: { message: 'negative', replicas: -1 },
    invalidField: 'spec.replicas',
  },
  {
    plural: 'gadgets',
    group: 'ecosystem.customapi.io',
    version: 'v1',
    kind: 'Gadget',
    spec: (message) => ({ message, size: 1 }),
    // The CRD's schema allows spec.size from 0 to 100.
    invalid: { message: 'too big', size: 1000 },
    invalidField: 'spec.size',
  },
];

function report(check, ok, detail) {
  console.log(JSON.stringify({ check, ok: Boolean(ok), detail: String(detail ?? '') }));
}

// statusOf returns the code and message of an ApiException's Status body.
function statusOf(err) {
  let message = err.message;
  try {
    const body = typeof err.body === 'string' ? JSON.parse(err.body) : err.body;
    if (body && body.message) {
      message = body.message;
    }
  } catch {
    // not a Status: keep the exception's message
  }
  return { code: err.code, message };
}

// expectError runs fn, which must fail with an ApiException of the given
// code whose message contains want.
async function expectError(fn, code, want) {
  try {
    await fn();
  } catch (err) {
    if (!(err instanceof k8s.ApiException)) {
      throw err;
    }
    const st = statusOf(err);
    return [st.code === code && st.message.includes(want), `HTTP ${st.code}: ${st.message}`];
  }
  return [false, `the request succeeded, want HTTP ${code}`];
}

// watchUntil starts a Watch of path with query, runs act once the watch
// is established, and collects the events that keep(type, obj) returns a
// string for, until stop(type, obj) is true or the timeout.
function watchUntil(kc, path, query, act, keep, stop) {
  return new Promise((resolve, reject) => {
    const seen = [];
    let controller;
    let finished = false;
    const finish = (err) => {
      if (finished) {
        return;
      }
      finished = true;
      clearTimeout(timer);
      if (controller) {
        controller.abort();
      }
      if (err) {
        reject(err);
      } else {
        resolve(seen);
      }
    };
    const timer = setTimeout(() => finish(new Error(`timed out after ${watchTimeout} ms; events so far: ${JSON.stringify(seen)}`)), watchTimeout);
    new k8s.Watch(kc)
      .watch(
        path,
        query,
        (type, obj) => {
          const s = keep(type, obj);
          if (s !== undefined) {
            seen.push(s);
          }
          if (stop(type, obj)) {
            finish();
          }
        },
        (err) => {
          if (!finished) {
            finish(err || new Error(`the watch ended early; events so far: ${JSON.stringify(seen)}`));
          }
        },
      )
      .then(async (c) => {
        controller = c;
        if (finished) {
          c.abort();
          return;
        }
        try {
          await act();
        } catch (err) {
          finish(err);
        }
      }, finish);
  });
}

async function runKind(kc, api, namespace, k) {
  const { plural, group, version } = k;
  const name = `js-${plural.slice(0, -1)}`;
  const base = { group, version, namespace, plural };
  const path = `/apis/${group}/${version}/namespaces/${namespace}/${plural}`;
  const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
  const manifest = (objName, message, labels) => ({
    apiVersion: `${group}/${version}`,
    kind: k.kind,
    metadata: { name: objName, labels },
    spec: k.spec(message),
  });
  let created;

  const checks = [
    ['create', async () => {
      created = await api.createNamespacedCustomObject({ ...base, body: manifest(name, 'hello', { client: 'node', pick: 'yes' }) });
      const md = created.metadata;
      return [md.uid && md.resourceVersion, `uid ${md.uid} resourceVersion ${md.resourceVersion}`];
    }],
    ['get', async () => {
      const obj = await api.getNamespacedCustomObject({ ...base, name });
      return [obj.spec.message === 'hello' && obj.metadata.uid === created.metadata.uid, JSON.stringify(obj.spec)];
    }],
    ['list-selector', async () => {
      await api.createNamespacedCustomObject({ ...base, body: manifest(`${name}-other`, 'other', { client: 'node', pick: 'no' }) });
      const picked = (await api.listNamespacedCustomObject({ ...base, labelSelector: 'client=node,pick=yes' })).items;
      const every = (await api.listNamespacedCustomObject({ ...base, labelSelector: 'client=node' })).items;
      const names = picked.map((o) => o.metadata.name).sort();
      return [names.length === 1 && names[0] === name && every.length === 2, `pick=yes: ${JSON.stringify(names)}; client=node: ${every.length} objects`];
    }],
    ['patch', async () => {
      const obj = await api.patchNamespacedCustomObject({ ...base, name, body: { spec: { message: 'patched' } } }, mergePatch);
      return [obj.spec.message === 'patched' && obj.metadata.generation === 2, `message ${obj.spec.message} generation ${obj.metadata.generation}`];
    }],
    ['conflict', async () => {
      // the resourceVersion of the create, before the patch
      const stale = { ...created, spec: k.spec('stale') };
      return expectError(() => api.replaceNamespacedCustomObject({ ...base, name, body: stale }), 409, 'modified');
    }],
    ['invalid', async () => {
      const body = { ...manifest(`${name}-invalid`, 'x', { client: 'node' }), spec: k.invalid };
      return expectError(() => api.createNamespacedCustomObject({ ...base, body }), 422, k.invalidField);
    }],
    ['watch', async () => {
      // A plain watch from the list's resourceVersion: once it is
      // established, create, patch and delete one object.
      const rv = (await api.listNamespacedCustomObject(base)).metadata.resourceVersion;
      const watched = `${name}-watched`;
      const seen = await watchUntil(
        kc,
        path,
        { resourceVersion: rv },
        async () => {
          await api.createNamespacedCustomObject({ ...base, body: manifest(watched, 'w1', { client: 'node' }) });
          await api.patchNamespacedCustomObject({ ...base, name: watched, body: { spec: { message: 'w2' } } }, mergePatch);
          await api.deleteNamespacedCustomObject({ ...base, name: watched });
        },
        (type, obj) => (obj.metadata.name === watched ? `${type} ${obj.spec.message}` : undefined),
        (type, obj) => type === 'DELETED' && obj.metadata.name === watched,
      );
      const want = ['ADDED w1', 'MODIFIED w2', 'DELETED w2'];
      return [JSON.stringify(seen) === JSON.stringify(want), `events ${JSON.stringify(seen)}, want ${JSON.stringify(want)}`];
    }],
    ['watch-list', async () => {
      // A watch list (sendInitialEvents, what informers use): the two
      // objects as ADDED, a bookmark marking the end of the initial
      // events, then a live event.
      const live = `${name}-live`;
      const seen = await watchUntil(
        kc,
        path,
        { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', allowWatchBookmarks: true },
        async () => {
          await api.createNamespacedCustomObject({ ...base, body: manifest(live, 'live', { client: 'node' }) });
        },
        (type, obj) => {
          if (type === 'BOOKMARK') {
            const end = obj.metadata.annotations?.['k8s.io/initial-events-end'];
            return end === 'true' ? 'BOOKMARK initial-events-end' : undefined;
          }
          return `${type} ${obj.metadata.name}`;
        },
        (type, obj) => type === 'ADDED' && obj.metadata.name === live,
      );
      await api.deleteNamespacedCustomObject({ ...base, name: live });
      const initial = seen.slice(0, 2).sort();
      const want = [`ADDED ${name}`, `ADDED ${name}-other`];
      const ok = JSON.stringify(initial) === JSON.stringify(want) && seen[2] === 'BOOKMARK initial-events-end' &&
        seen[3] === `ADDED ${live}` && seen.length === 4;
      return [ok, `events ${JSON.stringify(seen)}`];
    }],
    ['delete', async () => {
      await api.deleteNamespacedCustomObject({ ...base, name });
      await api.deleteNamespacedCustomObject({ ...base, name: `${name}-other` });
      return expectError(() => api.getNamespacedCustomObject({ ...base, name }), 404, 'not found');
    }],
  ];

  for (const [what, fn] of checks) {
    let ok;
    let detail;
    try {
      [ok, detail] = await fn();
    } catch (err) {
      ok = false;
      if (err instanceof k8s.ApiException) {
        const st = statusOf(err);
        detail = `HTTP ${st.code}: ${st.message}`;
      } else {
        detail = `${err.name}: ${err.message}`;
      }
    }
    report(`${plural}/${what}`, ok, detail);
  }
}

async function main() {
  const { values } = parseArgs({ options: { kubeconfig: { type: 'string' }, namespace: { type: 'string' } } });
  if (!values.kubeconfig || !values.namespace) {
    console.error('usage: node client.mjs --kubeconfig FILE --namespace NS');
    process.exit(2);
  }
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(values.kubeconfig);
  const pkg = JSON.parse(readFileSync(new URL(import.meta.resolve('@kubernetes/client-node/package.json')), 'utf8'));
  report('client', true, `@kubernetes/client-node ${pkg.version} on node ${process.version}`);
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  for (const k of kinds) {
    await runKind(kc, api, values.namespace, k);
  }
}

await main();
