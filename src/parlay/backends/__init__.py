"""Backends: where model output comes from. Each yields parlay's one event stream."""
