"""Detection: kernel log text to the bare message, the classifier, the subscription filter."""
