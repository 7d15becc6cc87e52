// Preloaded with `node --import` by crates/bondry/tests/upstreams_npm.rs: server-everything's
// streamableHttp mode listens on PORT on every interface, and a test stays on loopback, so
// each server that listens on a port alone listens on 127.0.0.1 instead.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const onPort = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (onPort && typeof args[1] !== "string") {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
