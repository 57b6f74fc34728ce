// The version `switchboard --version` prints: package.json's, compiled into the build (the
// runtime image has package.json too, but the bundle must not depend on where it sits).
import pkg from "../../package.json" with { type: "json" };

export const version: string = pkg.version;
