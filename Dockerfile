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
# Healthy while the admin listener's /readyz answers 200 (docs/operations.md). The admin
# listener runs when the configuration has an [admin] table or backends other than
# builtin handlers, and a token (`data_dir`, or [[admin.tokens]]); without it the check
# fails, so such a configuration should add `[admin]` and `data_dir = "/var/lib/bondry"`.
HEALTHCHECK --interval=10s --timeout=6s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/bondry", "health", "--config", "/etc/bondry/bondry.toml"]
# Audit records go to stdout, logs to stderr: `docker logs` shows both.
ENTRYPOINT ["/usr/local/bin/bondry"]
CMD ["serve", "--config", "/etc/bondry/bondry.toml"]
