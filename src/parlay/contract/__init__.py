"""The prompt-contract engine: pure, I/O-free pieces the prompted backend puts together."""
