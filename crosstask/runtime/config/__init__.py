"""What a job runs with: the resolved Run, gin command lines, model gin files, platform profiles."""
