print("tributary")
