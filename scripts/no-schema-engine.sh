#!/bin/sh
# Placeholder for PRISMA_SCHEMA_ENGINE_BINARY: `prisma generate` needs no schema
# engine, and this stops the CLI from trying to download one. Migrations are
# created with scripts/migration-create.mjs (WebAssembly engine) instead.
echo "The Rust schema engine is not installed. Create migrations with: npm run db:migration:create -- <name>" >&2
exit 1
