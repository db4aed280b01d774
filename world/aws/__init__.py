"""AWS for the local world: moto, the world's changes to it, the stack's resources
deployed in it, and what stands in for EC2's machines, their GPUs and identities."""
