"""scripts/powercut-campaign as modules: record.py reads what the guest half reported and judges a
round by it, campaign.py boots, cuts and totals the rounds (through nh/session.py).  The entry
script keeps the options and the chunks run side by side."""
