"""Networks, training, evaluation, agents and GTP."""
