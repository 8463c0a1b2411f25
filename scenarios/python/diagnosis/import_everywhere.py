"""A trainer that imports a helper package the image does not have: every
rank fails the same way at start-up, before any process group exists."""
import torch  # noqa: F401
import torch.distributed as dist  # noqa: F401

import fl_training_utils_not_installed  # noqa: F401,E402


def main():
    fl_training_utils_not_installed.run()


if __name__ == "__main__":
    main()
