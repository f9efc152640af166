# compileiq-controls v1 compiler=ptxas version=13.0
-O2
