#!/usr/bin/env python3
"""Upstream's descriptions of the built-in kinds' fields kubestore models, as data: for each
schema of kubestore's OpenAPI v3 documents that upstream also has (by name), upstream's
description of the schema ("") and of each property both have.

Regenerate registry-svc/src/catalog/descriptions.json after a built-in kind gains fields:

  scripts/openapi-descriptions.py http://127.0.0.1:6443 UPSTREAM.json... > registry-svc/src/catalog/descriptions.json

with a registry-svc serving its REST API there (scripts/run-local.sh), and upstream's
documentation, the first source naming a schema winning: kubernetes/api's
core/v1/types_swagger_doc_generated.go at the version /version reports (v0.33.x: every
core/v1 type of that release), kubernetes/client-go's
openapi/openapitest/testdata/api__v1_openapi.json (meta/v1), then kubernetes/cli-runtime's
artifacts/openapi/swagger-with-shared-parameters.json (the other groups). The descriptions are upstream's API documentation (Apache-2.0), used as data."""
import json, sys, urllib.request

server, sources = sys.argv[1], sys.argv[2:]


def swagger_docs(path):
    """k8s.io/api's core/v1 `types_swagger_doc_generated.go` as OpenAPI schemas (its `map_X`
    tables), the structs Go embeds (`VolumeSource` in `Volume`, `EphemeralContainerCommon` in
    `EphemeralContainer`) merged into their parents, as JSON flattens them."""
    import re
    maps = {}
    for m in re.finditer(r'var map_(\w+) = map\[string\]string\{\n(.*?)\n\}', open(path).read(), re.S):
        entries = {}
        for line in m.group(2).split("\n"):
            mm = re.match(r'\s*"([^"]*)":\s*"(.*)",\s*$', line)
            if mm:
                entries[mm.group(1)] = json.loads('"' + mm.group(2) + '"')
        maps[m.group(1)] = entries
    for parent, embedded in [("Volume", "VolumeSource"), ("EphemeralContainer", "EphemeralContainerCommon")]:
        for k, v in maps.get(embedded, {}).items():
            if k:
                maps.setdefault(parent, {}).setdefault(k, v)
    return {
        "io.k8s.api.core.v1." + name: {
            "description": entries.get(""),
            "properties": {k: {"description": v} for k, v in entries.items() if k},
        }
        for name, entries in maps.items()
    }


# Schema name -> {"": its description, property: description}; per description, the first
# source that has one wins (the Go tables lack what Go embeds: TypeMeta's apiVersion and kind,
# a LocalObjectReference's name, which the OpenAPI documents have).
upstream = {}
for path in sources:
    if path.endswith(".go"):
        schemas = swagger_docs(path)
    else:
        doc = json.load(open(path))
        schemas = doc.get("components", {}).get("schemas", {}) or doc.get("definitions", {})
    for k, v in schemas.items():
        known = upstream.setdefault(k, {})
        if v.get("description"):
            known.setdefault("", v["description"])
        for prop, p in (v.get("properties") or {}).items():
            if (p or {}).get("description"):
                known.setdefault(prop, p["description"])
ours = {}
index = json.load(urllib.request.urlopen(server + "/openapi/v3"))
for entry in index["paths"].values():
    doc = json.load(urllib.request.urlopen(server + entry["serverRelativeURL"]))
    ours.update(doc["components"]["schemas"])
out = {}
for name, schema in sorted(ours.items()):
    up = upstream.get(name, {})
    entry = {key: up[key] for key in [""] + sorted(schema.get("properties") or {}) if key in up}
    if entry:
        out[name] = entry
json.dump(out, sys.stdout, indent=0, sort_keys=True, ensure_ascii=False)
sys.stdout.write("\n")
