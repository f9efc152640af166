# compileiq-controls v1 compiler=gcc version=12.2
-O0
