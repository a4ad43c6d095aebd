"""LSTM cell in torch's form (gates i, f, g, o)."""
