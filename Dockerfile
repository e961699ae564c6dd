# gpulint as a container image: a static musl binary on a minimal base.
#
#   docker build -t gpulint .
#   docker run --rm -v "$PWD:/work" -w /work gpulint lint .
#   docker run --rm -v "$PWD:/work" -w /work gpulint image docker-archive:img.tar --gpu H100 --driver 550.54.15
#   docker run --rm -v /var/run/docker.sock:/var/run/docker.sock --user root gpulint image my/app:1.0 --gpu H100
#
# Build stage: Alpine's Rust toolchain targets musl natively, so the C parts of the
# dependencies (zstd, ring) are compiled and linked statically without a cross toolchain.
FROM rust:1-alpine AS build
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY matrices ./matrices
RUN cargo build --release --locked --bin gpulint \
 && strip target/release/gpulint \
 && ./target/release/gpulint --version \
 && if ldd target/release/gpulint >/dev/null 2>&1; then echo "not static" >&2; exit 1; fi

# For CI systems that run job scripts inside the image (GitLab CI): the same binary on
# distroless's busybox variant, which has a shell. `docker build --target ci -t gpulint:ci .`
FROM gcr.io/distroless/static-debian12:debug-nonroot AS ci
COPY --from=build /src/target/release/gpulint /usr/local/bin/gpulint
ENV XDG_CACHE_HOME=/tmp/gpulint-cache CI=true
ENTRYPOINT ["/usr/local/bin/gpulint"]

# Runtime (the default target): distroless "static" has no shell or package manager, only /etc/passwd, CA
# certificates, tzdata and a writable /tmp, which is all a static binary needs (registry TLS
# uses the bundled webpki roots; the layer cache goes to $XDG_CACHE_HOME).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/target/release/gpulint /usr/local/bin/gpulint
ENV XDG_CACHE_HOME=/tmp/gpulint-cache CI=true
ENTRYPOINT ["/usr/local/bin/gpulint"]
CMD ["--help"]
