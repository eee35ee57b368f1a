"""A ConfigMap's life through registry-svc, from Python: create, get, list, watch, delete.

Stubs come from the repository's protos (examples/clients/run.sh does this):

    python -m grpc_tools.protoc -I proto --python_out=GEN --grpc_python_out=GEN \
        proto/meta/v1/meta.proto proto/core/v1/core.proto
    PYTHONPATH=GEN python examples/clients/python/configmaps.py [127.0.0.1:50052]
"""

import os
import sys

import grpc
from core.v1 import core_pb2, core_pb2_grpc
from meta.v1 import meta_pb2


def main(address: str) -> None:
    name = f"example-python-{os.getpid()}"
    with grpc.insecure_channel(address) as channel:
        cms = core_pb2_grpc.ConfigMapsStub(channel)

        created = cms.Create(
            core_pb2.CreateConfigMapRequest(
                namespace="default",
                config_map=core_pb2.ConfigMap(
                    metadata=meta_pb2.ObjectMeta(name=name, labels={"example": "python"}),
                    data={"greeting": "hello"},
                ),
            ),
            timeout=10,
        )
        rv = created.metadata.resource_version
        print(f"created {name} at resourceVersion {rv}, uid {created.metadata.uid}")

        got = cms.Get(core_pb2.GetConfigMapRequest(namespace="default", name=name), timeout=10)
        assert got.data["greeting"] == "hello", got

        listed = cms.List(
            core_pb2.ListConfigMapsRequest(
                namespace="default",
                options=meta_pb2.ListOptions(label_selector="example=python"),
            ),
            timeout=10,
        )
        names = [item.metadata.name for item in listed.items]
        assert name in names, names
        print(f"listed {len(names)} with example=python at {listed.metadata.resource_version}")

        # Watch from the creation's resourceVersion: every change after it, the delete included.
        events = cms.Watch(
            core_pb2.WatchConfigMapsRequest(
                namespace="default",
                options=meta_pb2.ListOptions(
                    resource_version=rv, field_selector=f"metadata.name={name}"
                ),
            ),
            timeout=10,
        )
        deleted = cms.Delete(
            core_pb2.DeleteConfigMapRequest(namespace="default", name=name), timeout=10
        )
        assert deleted.deleted, deleted
        for event in events:
            kind = meta_pb2.WatchEventType.Name(event.type)
            print(f"watch: {kind} {event.object.metadata.name}")
            if event.type == meta_pb2.DELETED:
                break
        events.cancel()

        try:
            cms.Get(core_pb2.GetConfigMapRequest(namespace="default", name=name), timeout=10)
            raise SystemExit("still there after the delete")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.NOT_FOUND, e
            print(f"get after delete: {e.code().name}: {e.details()}")
    print("python client: ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50052")
