"""Learning-rate schedules built from config partials."""
