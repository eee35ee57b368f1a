"""Every published definition of tests/fixtures/crds/ through registry-svc, from Python:
create, get, list, delete, each schema compared with the manifest's.

A definition's `openAPIV3Schema` travels as JSON text: as nested `google.protobuf.Struct`s (three
messages per JSON level) cert-manager's Issuer passed upb's recursion limit of 100 and this
client could not decode the answer (`Exceeded upb_DecodeOptions_MaxDepth`).

    python -m grpc_tools.protoc -I proto --python_out=GEN --grpc_python_out=GEN \
        proto/meta/v1/meta.proto proto/apiextensions/v1/apiextensions.proto
    PYTHONPATH=GEN python examples/clients/python/definitions.py [127.0.0.1:50052] [CRD_DIR]
"""

import glob
import json
import os
import sys
import time

import grpc
from apiextensions.v1 import apiextensions_pb2 as ext
from apiextensions.v1 import apiextensions_pb2_grpc as ext_grpc
from google.protobuf import json_format


def message(manifest: dict) -> ext.CustomResourceDefinition:
    """The request's definition: the manifest without apiVersion and kind, schemas as text."""
    manifest = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind")}
    for version in manifest["spec"]["versions"]:
        schema = version.get("schema", {})
        if "openAPIV3Schema" in schema:
            schema["openAPIV3Schema"] = json.dumps(schema["openAPIV3Schema"])
    return json_format.ParseDict(manifest, ext.CustomResourceDefinition())


def schemas(crd) -> dict:
    return {v.name: json.loads(v.schema.open_api_v3_schema) for v in crd.spec.versions}


def gone(defs, name: str) -> None:
    """Waits until `name` is deleted (its objects' cleanup runs first)."""
    until = time.monotonic() + 30
    while time.monotonic() < until:
        try:
            defs.Get(ext.GetCustomResourceDefinitionRequest(name=name), timeout=10)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.NOT_FOUND:
                return
            raise
        time.sleep(0.1)
    raise AssertionError(f"{name} is still there after 30 s")


def main(address: str, directory: str) -> None:
    with grpc.insecure_channel(address) as channel:
        defs = ext_grpc.CustomResourceDefinitionsStub(channel)
        for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
            with open(path) as f:
                manifest = json.load(f)
            want = {
                v["name"]: v["schema"]["openAPIV3Schema"] for v in manifest["spec"]["versions"]
            }
            name = manifest["metadata"]["name"]
            # A definition left by an interrupted run goes first.
            try:
                defs.Delete(ext.DeleteCustomResourceDefinitionRequest(name=name), timeout=10)
                gone(defs, name)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.NOT_FOUND:
                    raise
            created = defs.Create(
                ext.CreateCustomResourceDefinitionRequest(custom_resource_definition=message(manifest)),
                timeout=10,
            )
            assert schemas(created) == want, f"{name}: the created schema differs"
            got = defs.Get(ext.GetCustomResourceDefinitionRequest(name=name), timeout=10)
            assert schemas(got) == want, f"{name}: the schema read back differs"
            listed = defs.List(ext.ListCustomResourceDefinitionsRequest(), timeout=10)
            assert name in [d.metadata.name for d in listed.items], f"{name} is not listed"
            defs.Delete(ext.DeleteCustomResourceDefinitionRequest(name=name), timeout=10)
            gone(defs, name)
            size = len(json.dumps(want))
            print(f"{name}: created, read back, listed and deleted ({size} bytes of schema)")


if __name__ == "__main__":
    main(
        sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50052",
        sys.argv[2] if len(sys.argv) > 2 else "tests/fixtures/crds",
    )
