# Bondry in a container: built from this checkout, run as a non-root user.
#
#   docker build -t bondry .
#   docker run --rm -p 7373:7373 -v "$PWD/bondry.toml:/etc/bondry/bondry.toml:ro" bondry
#
# The configuration's listener must bind 0.0.0.0 to be reached from outside the
# container (docs/install.md). The build stage runs the same release build as CI; the
# image itself is not built in CI.

# The full image, not -slim: jemalloc, SQLite and aws-lc build C with make and perl.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p bondry

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/bondry --create-home --shell /usr/sbin/nologin bondry \
 && chmod 0700 /var/lib/bondry \
 && mkdir -p /etc/bondry
COPY --from=build /src/target/release/bondry /usr/local/bin/bondry
USER bondry
WORKDIR /var/lib/bondry
EXPOSE 7373
# Audit records go to stdout, logs to stderr: `docker logs` shows both.
ENTRYPOINT ["/usr/local/bin/bondry"]
CMD ["serve", "--config", "/etc/bondry/bondry.toml"]
