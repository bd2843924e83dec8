"""hubspoke: train where the GPUs are while the dataset stays in its hub Region."""
