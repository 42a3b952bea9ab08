"""Drives customapi serve with the official Python client (kubernetes).

Run by test/ecosystem's TestPythonClient:

    python3 client.py --kubeconfig ADMIN_KUBECONFIG --namespace NS

NS must exist, and the Gadget CRD (testdata/chart/crds/gadgets.yaml) must be
Established. For each of two kinds, the Go-typed Custom (test/v1, customs) and
the CRD's Gadget (ecosystem.customapi.io/v1, gadgets), it creates, gets,
lists with a label selector, merge-patches, watches and deletes an object
through CustomObjectsApi, and provokes a 409 (an update with a stale
resourceVersion) and a 422 (an invalid object). Each check prints one JSON
line on stdout:

    {"check": "customs/create", "ok": true, "detail": "..."}

and the script exits 0 once every check ran, whatever their outcome: the Go
test judges the lines.
"""

import argparse
import json
import sys
import threading

import kubernetes
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

# How long a watch may wait for its events, in seconds.
WATCH_TIMEOUT = 30

KINDS = [
    {
        "plural": "customs",
        "group": "test",
        "version": "v1",
        "kind": "Custom",
        # spec of a valid object, of an object with another message, and
        # of an invalid one (the server refuses a negative spec.replicas).
        "spec": lambda message: {"message": message, "replicas": 1},
        "invalid": {"message": "negative", "replicas": -1},
        "invalid_field": "spec.replicas",
    },
    {
        "plural": "gadgets",
        "group": "ecosystem.customapi.io",
        "version": "v1",
        "kind": "Gadget",
        # the CRD's schema allows spec.size from 0 to 100.
        "spec": lambda message: {"message": message, "size": 1},
        "invalid": {"message": "too big", "size": 1000},
        "invalid_field": "spec.size",
    },
]


def report(check, ok, detail=""):
    """Prints one check's outcome as a JSON line."""
    print(json.dumps({"check": check, "ok": bool(ok), "detail": str(detail)}), flush=True)


def status_of(err):
    """The code and message of an ApiException's Status body."""
    try:
        body = json.loads(err.body)
        return body.get("code", err.status), body.get("message", "")
    except (TypeError, ValueError):
        return err.status, str(err.body)


def run_kind(api, ns, k):
    """Runs every check for one kind; the check names start with its plural."""
    plural, group, version = k["plural"], k["group"], k["version"]
    name = "py-" + plural[:-1]
    args = (group, version, ns, plural)

    def manifest(obj_name, message, labels):
        return {
            "apiVersion": f"{group}/{version}",
            "kind": k["kind"],
            "metadata": {"name": obj_name, "labels": labels},
            "spec": k["spec"](message),
        }

    def check(what, fn):
        try:
            ok, detail = fn()
        except ApiException as err:
            code, message = status_of(err)
            ok, detail = False, f"HTTP {code}: {message}"
        except Exception as err:  # pylint: disable=broad-except
            ok, detail = False, f"{type(err).__name__}: {err}"
        report(f"{plural}/{what}", ok, detail)

    created = {}

    def create():
        obj = api.create_namespaced_custom_object(*args, manifest(name, "hello", {"client": "python", "pick": "yes"}))
        created.update(obj)
        md = obj["metadata"]
        return bool(md.get("uid") and md.get("resourceVersion")), f"uid {md.get('uid')} resourceVersion {md.get('resourceVersion')}"

    def get():
        obj = api.get_namespaced_custom_object(group, version, ns, plural, name)
        return obj["spec"]["message"] == "hello" and obj["metadata"]["uid"] == created["metadata"]["uid"], json.dumps(obj["spec"])

    def list_selector():
        api.create_namespaced_custom_object(*args, manifest(name + "-other", "other", {"client": "python", "pick": "no"}))
        items = api.list_namespaced_custom_object(*args, label_selector="client=python,pick=yes")["items"]
        names = sorted(i["metadata"]["name"] for i in items)
        every = api.list_namespaced_custom_object(*args, label_selector="client=python")["items"]
        return names == [name] and len(every) == 2, f"pick=yes: {names}; client=python: {len(every)} objects"

    def patch():
        obj = api.patch_namespaced_custom_object(group, version, ns, plural, name, {"spec": {"message": "patched"}})
        return obj["spec"]["message"] == "patched" and obj["metadata"]["generation"] == 2, (
            f"message {obj['spec']['message']!r} generation {obj['metadata']['generation']}"
        )

    def conflict():
        stale = dict(created)  # the resourceVersion of the create, before the patch
        stale["spec"] = k["spec"]("stale")
        try:
            api.replace_namespaced_custom_object(group, version, ns, plural, name, stale)
        except ApiException as err:
            code, message = status_of(err)
            return code == 409, f"HTTP {code}: {message}"
        return False, "the stale update succeeded"

    def invalid():
        body = manifest(name + "-invalid", "x", {"client": "python"})
        body["spec"] = k["invalid"]
        try:
            api.create_namespaced_custom_object(*args, body)
        except ApiException as err:
            code, message = status_of(err)
            return code == 422 and k["invalid_field"] in message, f"HTTP {code}: {message}"
        return False, "the invalid object was created"

    def watch_events():
        # A watch from the list's resourceVersion sees what another thread
        # does after it: create, patch and delete of one object.
        rv = api.list_namespaced_custom_object(*args)["metadata"]["resourceVersion"]
        watched = name + "-watched"
        errors = []

        def act():
            try:
                api.create_namespaced_custom_object(*args, manifest(watched, "w1", {"client": "python"}))
                api.patch_namespaced_custom_object(group, version, ns, plural, watched, {"spec": {"message": "w2"}})
                api.delete_namespaced_custom_object(group, version, ns, plural, watched)
            except Exception as err:  # pylint: disable=broad-except
                errors.append(err)

        actor = threading.Thread(target=act)
        actor.start()
        seen = []
        w = watch.Watch()
        for event in w.stream(api.list_namespaced_custom_object, *args, resource_version=rv, timeout_seconds=WATCH_TIMEOUT):
            obj = event["object"]
            if obj["metadata"]["name"] != watched:
                continue
            seen.append(f"{event['type']} {obj['spec']['message']}")
            if event["type"] == "DELETED":
                w.stop()
        actor.join()
        if errors:
            return False, f"writes during the watch failed: {errors[0]}"
        want = ["ADDED w1", "MODIFIED w2", "DELETED w2"]
        return seen == want, f"events {seen}, want {want}"

    def delete():
        api.delete_namespaced_custom_object(group, version, ns, plural, name)
        api.delete_namespaced_custom_object(group, version, ns, plural, name + "-other")
        try:
            api.get_namespaced_custom_object(group, version, ns, plural, name)
        except ApiException as err:
            return err.status == 404, f"get after delete: HTTP {err.status}"
        return False, "the object is still there"

    for what, fn in [
        ("create", create),
        ("get", get),
        ("list-selector", list_selector),
        ("patch", patch),
        ("conflict", conflict),
        ("invalid", invalid),
        ("watch", watch_events),
        ("delete", delete),
    ]:
        check(what, fn)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    opts = parser.parse_args()

    config.load_kube_config(config_file=opts.kubeconfig)
    report("client", True, f"kubernetes {kubernetes.__version__} on Python {sys.version.split()[0]}")
    api = client.CustomObjectsApi()
    for k in KINDS:
        run_kind(api, opts.namespace, k)


if __name__ == "__main__":
    main()
