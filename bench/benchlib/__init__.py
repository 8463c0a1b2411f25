"""Pieces of bench/run: process probes, one module per group of measures, the table."""
