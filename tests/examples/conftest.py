"""The examples under examples/ are installed and run the way a user would."""
