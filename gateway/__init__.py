"""The gateway's web side (SPEC section 11): the tools it offers and the calls agents make
through it, checked and forwarded once. A floor of its own between ``reviews`` and
``runs``: a bound call is a step of a run, executed through ``runs``' claim and record."""
