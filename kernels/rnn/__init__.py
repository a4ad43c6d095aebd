"""Elman RNN cell: ``h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)``, act tanh or relu."""
