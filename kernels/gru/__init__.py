"""GRU cell in torch's form (gates r, z, n; the reset gate multiplies ``W_hn h + b_hn``)."""
