"""What a run can watch besides its metrics: per-layer gradient norms (`callbacks=grad_norm`)."""
