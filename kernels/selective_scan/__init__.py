"""Mamba-1 selective scan: `reference.selective_scan_reference` and `scan.selective_scan`."""
