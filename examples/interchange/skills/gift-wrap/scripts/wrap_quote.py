"""Prints a gift-wrap quote. Shipped with the skill; harnessctl never runs it."""

print("gift wrap: free during live sales")
