"""Real engines for the tests: a Slurm cluster and a Ray head, each in its own network namespace."""
