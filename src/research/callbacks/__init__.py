"""Lightning callbacks: the ones every run gets (epochs, divergence, checkpoint_state;
last_checkpoint when `save_last` asks for `last.ckpt`) and the optional ones a config names
(progress, grad_norms, throughput)."""
