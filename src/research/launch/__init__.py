"""Other processes of a job: the DDP ranks a job starts on its node, and what SLURM tells a job
about its own ending (requeue, cancel, time limit)."""
