# One image, both services: storage-svc and registry-svc (and the kubestore CLI).
# Fully qualified image names: podman (and docker without a default registry) refuse short ones.
FROM docker.io/library/rust:1.95-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends protobuf-compiler && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Stripped release binaries (about 11 MB instead of 70 MB): panics still name the function.
ENV CARGO_PROFILE_RELEASE_DEBUG=false CARGO_PROFILE_RELEASE_STRIP=true
RUN cargo build --release --locked -p storage-svc -p registry-svc -p kubestore-cli \
 && cp target/release/storage-svc target/release/registry-svc target/release/kubestore /usr/local/bin/

FROM docker.io/library/debian:bookworm-slim
# openssl: the compose stack's one-shot `pki` service makes its keys with it (compose-pki.sh).
RUN apt-get update && apt-get install -y --no-install-recommends openssl && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 kubestore \
 && mkdir -p /var/log/kubestore && chown kubestore /var/log/kubestore
COPY --from=build /usr/local/bin/storage-svc /usr/local/bin/registry-svc /usr/local/bin/kubestore /usr/local/bin/
COPY scripts/make-certs.sh scripts/compose-pki.sh /usr/local/bin/
# registry-svc's audit policy in the compose stack (AUDIT_POLICY_FILE); its log goes to
# /var/log/kubestore, a volume the image gives to uid 10001.
COPY examples/audit-policy.yaml /etc/kubestore/audit-policy.yaml
USER kubestore
# storage-svc 50051, registry-svc 50052, metrics 9091/9092
EXPOSE 50051 50052 9091 9092
CMD ["storage-svc"]
