// Only `prisma dev` (a local Prisma Postgres server) imports this package; Switchboard never runs it.
throw new Error("@prisma/streams-local is stubbed out by switchboard's package.json overrides: `prisma dev` is not supported in this project.");
