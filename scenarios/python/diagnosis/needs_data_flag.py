"""A trainer with a required --data argument, started without it: argparse
rejects the command line on every rank (exit status 2)."""
import argparse


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=True)
    p.add_argument("--epochs", type=int, default=1)
    args = p.parse_args()
    print(args)


if __name__ == "__main__":
    main()
