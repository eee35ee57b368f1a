#!/usr/bin/env python3
"""Upstream's descriptions of the built-in kinds' fields kubestore models, as data: for each
schema of kubestore's OpenAPI v3 documents that upstream also has (by name), upstream's
description of the schema ("") and of each property both have.

Regenerate registry-svc/src/rest/descriptions.json after a built-in kind gains fields:

  scripts/openapi-descriptions.py http://127.0.0.1:6443 UPSTREAM.json... > registry-svc/src/rest/descriptions.json

with a registry-svc serving its REST API there (scripts/run-local.sh), and upstream's OpenAPI
documents, the first naming a schema winning: kubernetes/client-go's
openapi/openapitest/testdata/api__v1_openapi.json (core/v1 and meta/v1 of 1.36), then
kubernetes/cli-runtime's artifacts/openapi/swagger-with-shared-parameters.json (the other
groups). The descriptions are upstream's API documentation (Apache-2.0), used as data."""
import json, sys, urllib.request

server, sources = sys.argv[1], sys.argv[2:]
upstream = {}
for path in sources:
    doc = json.load(open(path))
    for k, v in (doc.get("components", {}).get("schemas", {}) or doc.get("definitions", {})).items():
        upstream.setdefault(k, v)
ours = {}
index = json.load(urllib.request.urlopen(server + "/openapi/v3"))
for entry in index["paths"].values():
    doc = json.load(urllib.request.urlopen(server + entry["serverRelativeURL"]))
    ours.update(doc["components"]["schemas"])
out = {}
for name, schema in sorted(ours.items()):
    up = upstream.get(name)
    if not up:
        continue
    entry = {}
    if up.get("description"):
        entry[""] = up["description"]
    for prop in sorted((schema.get("properties") or {})):
        d = ((up.get("properties") or {}).get(prop) or {}).get("description")
        if d:
            entry[prop] = d
    if entry:
        out[name] = entry
json.dump(out, sys.stdout, indent=0, sort_keys=True, ensure_ascii=False)
sys.stdout.write("\n")
