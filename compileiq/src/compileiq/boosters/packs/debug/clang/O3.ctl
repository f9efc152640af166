# compileiq-controls v1 compiler=clang version=14.0
-O3
