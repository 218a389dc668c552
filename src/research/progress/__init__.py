"""Training progress as log lines for runs nobody watches in a terminal (`log.ProgressLog`)."""
