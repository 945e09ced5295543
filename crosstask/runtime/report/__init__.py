"""What a researcher watches: the console, TensorBoard, and the faults a run reports plainly."""
