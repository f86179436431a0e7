# syntax=docker/dockerfile:1
# Static, non-root image of cobranca. Build:
#   docker build --build-arg VERSION=1.0.0 --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ) -t cobranca .
# `cobranca version` in the image prints VERSION and REVISION. The build stage's `go build`
# line is run as written, by /bin/sh, by a test (cmd/cobranca/dockerfile_test.go): keep it
# one RUN, writing under /out.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" -o /out/cobranca ./cmd/cobranca \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED
# OCI annotations (https://github.com/opencontainers/image-spec/blob/main/annotations.md).
LABEL org.opencontainers.image.title="cobranca" \
      org.opencontainers.image.description="Self-hosted MCP server for collections, with enforced Tool Contracts" \
      org.opencontainers.image.source="https://github.com/cobranca/cobranca" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
COPY --from=build /out/cobranca /usr/local/bin/cobranca
COPY --from=build --chown=65532:65532 /out/data /data
# Production by default: the image refuses to start without an issuer, an
# audit key and the rest (the message names what is missing), rather than
# serving development tokens on 0.0.0.0. docker-compose.yml opts into
# development mode for evaluation.
ENV COBRANCA_ENV=production \
    COBRANCA_ADDR=0.0.0.0:8080 \
    COBRANCA_DATA_DIR=/data
USER 65532:65532
EXPOSE 8080
# Readiness, not liveness: healthy when the server can serve (its store answers, its schema
# is current), asked of COBRANCA_ADDR's port on the loopback by the binary itself (the image
# has no shell and no curl). The check answers within 3s; a start with pending work (opening
# the store, the audit spool) gets 30s before failures count.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/cobranca", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/cobranca"]
CMD ["serve"]
