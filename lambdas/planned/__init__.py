"""The planned Lambda: AWS's advance notices (EventBridge) → planned remediations."""
