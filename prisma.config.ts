import path from "node:path";
import { defineConfig } from "prisma/config";

// One model file, two providers: DB_PROVIDER picks the folder that holds the
// generator, the datasource and that provider's migrations.
const provider = process.env.DB_PROVIDER ?? "sqlite";
if (provider !== "sqlite" && provider !== "postgresql") {
  throw new Error(`DB_PROVIDER must be sqlite or postgresql, got "${provider}"`);
}

export default defineConfig({
  schema: path.join("prisma", provider),
  migrations: { path: path.join("prisma", provider, "migrations") },
  datasource: {
    url: process.env.DATABASE_URL ?? (provider === "sqlite" ? "file:./data/dev-migrations.db" : "postgresql://postgres@127.0.0.1:5432/switchboard"),
  },
});
