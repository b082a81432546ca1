"""The ``urbandp budget`` wing: a privacy budget that lasts across releases (see urbandp.privacy.budget_store)."""
