# gpulint as a container image: a static musl binary on a minimal base.
#
#   docker build -t gpulint .
#   docker run --rm -v "$PWD:/work" -w /work gpulint lint .
#   docker run --rm -v "$PWD:/work" -w /work gpulint image docker-archive:img.tar --gpu H100 --driver 550.54.15
#   docker run --rm -v /var/run/docker.sock:/var/run/docker.sock --user root gpulint image my/app:1.0 --gpu H100
#
# Base images are pinned by digest (the multi-platform index; the tag stays for readers), so a
# rebuild of a release uses the bases it was tested with. To move to newer bases, replace each
# digest with what `docker buildx imagetools inspect IMAGE:TAG` prints as the index digest. Dependabot (`.github/dependabot.yml`) proposes these updates weekly.
#
# Build stage: Alpine's Rust toolchain targets musl natively, so the C parts of the
# dependencies (zstd, ring) are compiled and linked statically without a cross toolchain.
FROM rust:1-alpine@sha256:a10e64dd139b7387337c7fbe8aca31b959b57b2fd4c8ae20a02cf1d6ea424dce AS build
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
FROM gcr.io/distroless/static-debian12:debug-nonroot@sha256:f414196eb26b4e7626e29e18776338e5dcc56a2afbe1c64321ab9bf7d7e57c45 AS ci
COPY --from=build /src/target/release/gpulint /usr/local/bin/gpulint
ENV XDG_CACHE_HOME=/tmp/gpulint-cache CI=true
ENTRYPOINT ["/usr/local/bin/gpulint"]

# Runtime (the default target): distroless "static" has no shell or package manager, only /etc/passwd, CA
# certificates, tzdata and a writable /tmp, which is all a static binary needs (registry TLS
# uses the bundled webpki roots; the layer cache goes to $XDG_CACHE_HOME).
FROM gcr.io/distroless/static-debian12:nonroot@sha256:d093aa3e30dbadd3efe1310db061a14da60299baff8450a17fe0ccc514a16639
COPY --from=build /src/target/release/gpulint /usr/local/bin/gpulint
ENV XDG_CACHE_HOME=/tmp/gpulint-cache CI=true
ENTRYPOINT ["/usr/local/bin/gpulint"]
CMD ["--help"]
