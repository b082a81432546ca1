from urbandp.cli import main

main()
