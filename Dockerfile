# syntax=docker/dockerfile:1
# Static, non-root image of cobranca. Build: docker build -t cobranca .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/cobranca ./cmd/cobranca \
 && mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
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
HEALTHCHECK NONE
ENTRYPOINT ["/usr/local/bin/cobranca"]
CMD ["serve"]
