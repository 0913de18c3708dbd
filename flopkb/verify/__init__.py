"""Verification: experiments that run the bundled kernels, timing, verdicts and evidence."""
