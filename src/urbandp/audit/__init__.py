"""Attacks on published count tables (Culnane, Rubinstein, Teague 2017): noise scale, zero skipping, differencing."""
