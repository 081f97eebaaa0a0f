from rgbt.cli import main

raise SystemExit(main())
